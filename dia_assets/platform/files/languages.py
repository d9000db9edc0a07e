"""Letter statistics per language: what a correctly decoded text looks like.

Encoding detection (`encodings.py`) decodes a file's bytes with every candidate code page and
asks which result reads as some language. Code pages of one family map the same bytes to
different letters of one script (cp1252 `ø` is cp1250 `ř`), so the question is answered by
which letters a language uses and how often: `Pøíliš` mixes Danish, Spanish and Finnish
letters, `Příliš` is plain Czech.

Frequencies are per cent of all letters of running text, rounded from published letter
frequency tables; only their rough size matters. Cyrillic and Greek list the whole alphabet.
Chinese, Japanese and Korean are described by character tiers instead (`cjk_cost`): the few
hundred most common characters, the first level of the national standard, and the rest.
"""

from __future__ import annotations

import math
import unicodedata
from functools import lru_cache

import numpy as np

# Letters other than a-z, with their frequency in per cent of letters.
LATIN: dict[str, str] = {
    "English": "é0.01",
    "French": "é1.5 à0.49 è0.27 ê0.22 ç0.085 ù0.058 û0.06 â0.051 î0.045 ô0.023 œ0.018 ë0.008 ï0.005 ü0.005 ÿ0.002",
    "German": "ü1.0 ä0.58 ö0.44 ß0.31",
    "Spanish": "ó0.83 í0.73 á0.5 é0.43 ñ0.31 ú0.17 ü0.012",
    "Portuguese": "ã0.73 ô0.64 â0.56 ç0.53 ê0.45 é0.34 ó0.3 ú0.21 í0.13 á0.12 à0.07 õ0.04 ü0.02",
    "Italian": "à0.64 è0.26 ù0.17 é0.1 ò0.1 ì0.03 í0.01 ó0.01",
    "Catalan": "é0.5 à0.6 è0.4 ò0.4 ó0.4 í0.3 ç0.3 ú0.2 ï0.1 ü0.05",
    "Dutch": "é0.1 ë0.05 ï0.02 è0.02 ö0.01 ü0.01 á0.01",
    "Swedish": "ä1.8 å1.34 ö1.31 é0.02",
    "Danish": "ø0.94 æ0.87 å1.19 é0.02",
    "Finnish": "ä3.58 ö0.44 å0.003 š0.01 ž0.01",
    "Icelandic": "ð4.39 á1.8 í1.57 þ1.46 ó0.99 æ0.87 ö0.78 é0.65 ú0.61 ý0.23",
    "Irish": "á1.5 í1.5 ó1.0 é0.5 ú0.5",
    "Albanian": "ë7.0 ç0.5",
    "Polish": "ł2.11 ó1.14 ę1.04 ś0.81 ć0.74 ż0.71 ą0.7 ń0.36 ź0.08",
    "Czech": "í1.64 ě1.22 ý1.0 á0.87 ř0.8 ž0.72 š0.69 é0.63 č0.46 ů0.2 ň0.1 ť0.05 ú0.05 ó0.02 ď0.02",
    "Slovak": "á2.1 í1.4 ý1.0 č1.0 ž0.8 é0.7 š0.7 ú0.7 ľ0.3 ť0.2 ó0.2 ô0.2 ä0.1 ď0.1 ň0.1 ĺ0.01 ŕ0.01",
    "Hungarian": "é3.9 á3.4 ö1.0 ó0.9 ő0.8 í0.6 ü0.5 ú0.3 ű0.1",
    "Slovene": "č1.0 š1.0 ž0.7",
    "Croatian": "č1.1 š1.0 ž0.8 ć0.7 đ0.2",
    "Romanian": "ă4.0 î1.3 â1.0 ș1.2 ț1.2 ş1.2 ţ1.2",
    "Turkish": "ı5.11 ü1.85 ş1.78 ç1.46 ğ1.13 ö0.78 İ0.5 â0.05 î0.02 û0.02",
    "Lithuanian": "ė1.5 š1.3 ų1.0 ž0.8 ą0.6 į0.6 ū0.5 č0.4 ę0.2",
    "Latvian": "ā4.0 ē1.8 ī1.7 š1.3 ž0.8 ū0.6 ļ0.4 ņ0.4 č0.3 ģ0.2 ķ0.2",
    "Estonian": "ä1.0 õ0.9 ü0.9 ö0.2 š0.02 ž0.01",
}

# Letters of a-z that a language writes in loanwords only (Polish has no v, Turkish no q, w, x):
# a word with them reads poorly as that language.
RARE_ASCII: dict[str, str] = {
    "French": "kw", "German": "qxy", "Spanish": "kw", "Portuguese": "kwy", "Italian": "jkwxy", "Catalan": "kwy",
    "Dutch": "qx", "Swedish": "qwz", "Danish": "qwxz", "Finnish": "bcfqwxz", "Icelandic": "cqwz",
    "Irish": "jkqvwxyz", "Albanian": "w", "Polish": "qvx", "Czech": "qwx", "Slovak": "qwx", "Hungarian": "qwx",
    "Slovene": "qwxy", "Croatian": "qwxy", "Romanian": "kqwy", "Turkish": "qwx", "Lithuanian": "qwx",
    "Latvian": "qwxy", "Estonian": "cqwxyz",
}
RARE = 0.05  # per cent of letters, for each of those

# Whole alphabets, in per cent of letters.
ALPHABETS: dict[str, str] = {
    "Russian": "о10.97 е8.45 а8.01 и7.35 н6.7 т6.26 с5.47 р4.73 в4.54 л4.4 к3.49 м3.21 д2.98 п2.81 у2.62 "
               "я2.01 ы1.9 ь1.74 г1.7 з1.65 б1.59 ч1.44 й1.21 х0.97 ж0.94 ш0.73 ю0.64 ц0.48 щ0.36 э0.32 "
               "ф0.26 ъ0.04 ё0.04",
    "Ukrainian": "о9.4 а8.4 н6.5 и6.1 і5.9 в5.3 т5.0 е4.8 р4.7 с4.2 к3.9 л3.6 у3.5 д3.2 м3.1 п2.8 з2.2 я2.1 "
                 "ь1.7 б1.6 г1.4 ч1.3 й1.2 х1.0 ж0.9 ц0.9 ї0.8 ю0.7 ш0.7 є0.6 щ0.5 ф0.3 ґ0.05",
    "Belarusian": "а8.5 о6.5 н6.0 ы5.0 і5.0 е4.5 р4.5 с4.5 т4.5 л4.0 в3.5 к3.5 ў2.0 д3.0 м3.0 з2.5 п2.5 я2.5 "
                  "у2.5 ь2.0 ц1.5 б1.5 г1.5 ч1.5 й1.0 ш1.0 х1.0 ж0.8 ю0.5 э0.5 ф0.2 ё0.5",
    "Bulgarian": "о9.1 а8.5 е8.0 и7.7 т7.0 н6.4 р4.9 в4.5 с4.5 к3.5 л3.3 д3.2 п2.8 м2.6 ъ2.3 я2.1 з1.8 г1.6 "
                 "у1.3 б1.3 ч1.2 ж0.7 ц0.6 х0.5 й0.4 ш0.4 щ0.4 ю0.2 ф0.2 ь0.1",
    "Serbian": "а11.0 и9.5 о9.0 е8.5 н5.0 р5.0 ј5.0 т4.5 с4.5 у4.0 в3.5 к3.5 д3.5 м3.0 л3.0 п2.8 з1.5 г1.5 "
               "б1.5 ч1.2 ш0.8 ц0.8 ћ0.8 ж0.6 њ0.5 љ0.5 х0.2 ђ0.2 ф0.1 џ0.1",
    "Macedonian": "а10.0 о9.0 е8.5 и8.0 н5.5 т5.5 р4.5 с4.0 в3.5 д3.5 к3.5 л3.0 п3.0 м3.0 ј2.5 з1.5 у1.5 "
                  "г1.5 б1.5 ч1.0 ш0.8 ц0.6 ж0.5 ѓ0.3 њ0.3 љ0.3 ќ0.3 ф0.2 х0.2 џ0.1 ѕ0.05",
    "Greek": "α11.0 ο8.5 ε7.0 ι6.5 τ8.0 ν6.5 σ4.3 ρ4.9 η3.7 υ3.5 κ4.2 π4.1 μ3.4 λ2.7 ς2.8 δ1.8 γ1.8 ω1.1 "
             "θ1.2 χ1.0 φ0.8 β0.6 ξ0.3 ζ0.3 ψ0.2 ά1.8 ί1.8 ό1.6 έ1.5 ή1.2 ύ0.6 ώ0.5 ϊ0.05 ϋ0.02 ΐ0.01 ΰ0.01",
}

CJK_LANGUAGES = ("Chinese", "Chinese (traditional)", "Japanese", "Korean")
LANGUAGES: tuple[str, ...] = (*LATIN, *ALPHABETS, *CJK_LANGUAGES)

# -ln P(language) of a text file's contents, roughly: how much a short text must favour a
# language before it is read as that language rather than a more widely written one.
_PRIOR = {"English": 0.0, "French": 0.5, "German": 0.5, "Spanish": 0.5, "Portuguese": 0.5, "Italian": 0.5,
          "Russian": 0.5, "Chinese": 0.5, "Japanese": 0.5, "Dutch": 1.0, "Swedish": 1.0, "Polish": 1.0,
          "Czech": 1.0, "Hungarian": 1.0, "Turkish": 1.0, "Ukrainian": 1.0, "Greek": 1.0, "Korean": 1.0,
          "Danish": 1.5, "Finnish": 1.5, "Slovak": 1.5, "Croatian": 1.5, "Romanian": 1.5, "Bulgarian": 1.5,
          "Serbian": 1.5, "Chinese (traditional)": 1.0}
LANGUAGE_PRIOR = np.array([_PRIOR.get(name, 2.0) for name in LANGUAGES])

FOREIGN = 13.0  # cost of a letter a language does not use (about one in 400,000)
ASCII_IN_NON_LATIN = 8.0  # a Latin letter inside a Cyrillic, Greek or CJK word: an abbreviation
# Common Chinese characters (the first ones cover about three quarters of running text).
COMMON_CHINESE = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后"
    "多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它"
    "合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变"
    "条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头"
    "基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即"
    "保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带"
    "安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研"
    "界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便"
    "团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识"
    "适属圆包火住调满县局照参红细引听该铁价严首底液官德随病苏失尔死讲配女黄推显谈罪神艺呢席含企望密批营项防举球"
    "英氧势告李台落木帮轮破亚师围注远字材排供河态封另施减树溶怎止案言士均武固叶鱼波视仅费紧爱左章早朝害续轻服试"
    "食充兵源判护司足某练差致板田降黑犯负击范继兴似余坚曲输修故城夫够送笑船占右财吃富春职觉汉画功巴跟虽杂飞检吸"
    "助升阳互初创抗考投坏策古径换未跑留钢曾端责站简述钱副尽帝射草冲承独令限阿宣环双请超微让控州良轴找否纪益依优"
    "顶础载倒房突坐粉敌略客袁冷胜绝析块剂测丝协诉念陈仍罗盐友洋错苦夜刑移频逐靠混母短皮终聚汽村云哪既距卫停烈央"
    "察烧迅境若印洲刻括激孔搞甚室待核校散侵吧甲游久菜味旧模湖货损预阻毫普稳乙妈植息扩银语挥酒守拿序纸医缺雨吗针"
    "刘啊急唱误训愿审附获茶鲜粮斤孩脱硫肥善龙演父渐血欢械掌歌沙刚攻谓盾讨晚粒乱燃矛乎杀药宁鲁贵钟煤读班伯香介迫"
    "句丰培握兰担弦蛋沉假穿执答乐谁顺烟缩征脸喜松脚困异免背星福买染井概慢怕磁倍祖皇促静补评翻肉践尼衣宽扬棉希伤"
    "操垂秋宜氢套督振架亮末宪庆编牛触映雷销诗座居抓裂胞呼娘景威绿晶厚盟衡鸡孙延危胶屋乡临陆顾掉呀灯岁措束耐剧玉"
    "赵跳哥季课凯胡额款绍卷齐伟蒸殖永宗苗川炉岩弱零杨奏沿露杆探滑镇饭浓航怀赶库夺伊灵税途灭赛归召鼓播盘裁险康唯"
    "录菌纯借糖盖横符私努堂域枪润幅哈竟熟虫泽脑壤碳欧遍侧寨敢彻虑斜薄庭纳弹饲伸折麦湿暗荷瓦塞床筑恶户访塔奇透梁"
    "刀旋迹卡氯遇份毒泥退洗摆灰彩卖耗夏择忙铜献硬予繁圈雪函亦抽篇阵阴丁尺追堆雄迎泛爸楼避谋吨野猪旗累偏典馆索秦"
    "脂潮爷豆忽托惊塑遗愈朱替纤粗倾尚痛楚谢奋购磨君池旁碎骨监捕弟暴割贯殊释词亡壁顿宝午尘闻揭炮残冬桥妇警综招吴"
    "付浮遭徐您摇谷赞箱隔订男吹园纷唐败宋玻巨耕坦荣闭湾键凡驻锅救恩剥凝碱齿截炼麻纺禁废盛版缓净睛昌婚涉筒嘴插岸"
    "朗庄街藏姑贸腐奴啦惯乘伙恢匀纱扎辩耳彪臣亿璃抵脉秀萨俄网舞店喷纵寸汗挂洪贺闪柬爆烯津稻墙软勇像滚厘蒙芳肯坡"
    "柱荡腿仪旅尾轧冰贡登黎削钻勒逃障氨郭峰币港伏轨亩毕擦莫刺浪秘援株健售股岛甘泡睡童铸汤阀休汇舍牧绕炸哲磷绩朋"
    "淡尖启陷柴呈徒颜泪稍忘泵蓝拖洞授镜辛壮锋贫虚弯摩泰幼廷尊窗纲弄隶疑氏宫姐震瑞怪尤琴循描膜违夹腰缘珠穷森枝竹"
    "沟催绳忆邦剩幸浆栏拥牙贮礼滤钠纹罢拍咱喊袖埃勤罚焦潜伍墨欲缝姓刊饱仿奖铝鬼丽跨默挖链扫喝袋炭污幕诸弧励梅奶"
    "洁灾舟鉴苯讼抱毁懂寒智埔寄届跃渡挑丹艰贝碰拔爹戴码梦芽熔赤渔哭敬颗奔铅仲虎稀妹乏珍申桌遵允隆螺仓魏锐晓氮兼"
    "隐碍赫拨忠肃缸牵抢博巧壳兄杜讯诚碧祥柯页巡矩悲灌龄伦票寻桂铺圣恐恰郑趣抬荒腾贴柔滴猛阔辆妻填撤储签闹扰紫砂"
    "递戏吊陶伐喂疗瓶婆抚臂摸忍虾蜡邻胸巩挤偶弃槽劲乳邓吉仁烂砖租乌舰伴瓜浅丙暂燥橡柳迷暖牌秧胆详簧踏瓷谱呆宾糊"
    "洛辉愤竞隙怒粘乃绪肩籍敏涂熙皆侦悬掘享纠醒狂锁淀恨牲霸爬赏逆玩陵祝秒浙貌役彼悉鸭趋凤晨畜辈秩卵署梯炎滩棋驱"
    "筛峡冒啥寿译浸泉帽迟硅疆贷漏稿冠嫩胁芯牢叛蚀奥鸣岭羊凭串塘绘酵融盆锡庙筹冻辅摄袭筋拒僚旱钾鸟漆沈眉疏添棒穗"
    "硝韩逼扭侨凉挺碗栽炒杯患馏劝豪辽勃鸿旦吏拜狗埋辊掩饮搬骂辞勾扣估蒋绒雾丈朵姆拟宇辑陕雕偿蓄崇剪倡厅咬驶薯刷"
    "斥番赋奉佛浇漫曼扇钙桃扶仔返俗亏腔鞋棱覆框悄叔撞骗勘旺沸孤吐孟渠屈疾妙惜仰狠胀谐抛霉桑岗嘛衰盗渗脏赖涌甜曹"
    "阅肌哩厉烃纬毅昨伪症煮叹钉搭茎笼酷偷弓锥恒杰坑鼻翼纶叙狱逮罐络棚抑膨蔬寺骤穆冶枯册尸凸绅坯牺焰轰欣晋瘦御锭"
    "锦丧旬锻垄搜扑邀亭酯迈舒脆酶闲忧酚顽羽涨卸仗陪辟惩杭姚肚捉飘漂昆欺吾郎烷汁呵饰萧雅邮迁燕撒姻赴宴烦债帐斑铃"
    "旨醇董饼雏姿拌傅腹妥揉贤拆歪葡胺丢浩徽昂垫挡览贪慰缴汪慌冯诺姜谊凶劣诬耀昏躺盈骑乔溪丛卢抹闷咨刮驾缆悟摘铒"
    "掷颇幻柄惠惨佳仇腊窝涤剑瞧堡泼葱罩霍捞胎苍滨俩捅湘砍霞邵萄疯淮遂熊粪烘宿档戈驳嫂裕徙箭捐肠撑晒辨殿莲摊搅酱"
    "屏疫哀蔡堵沫皱畅叠阁莱敲辖钩痕坝巷饿祸丘玄溜曰逻彭尝卿妨艇吞韦怨矮歇"
)
# The most frequent Korean syllables (particles, endings, common nouns).
COMMON_KOREAN = frozenset(
    "이다의는에을하고가지기서로한를은사도리대시자어수나인아일니게정보면것있주전국적해부구상들내만비제성장여마우동"
    "라요거실안원생개무오그위미소과조까경공방후선문계식모신러물연화단중회세스트발터결관간데금용할했된되음없말때통"
    "분저학년월날씨좋네울산강영운민행진명감알잘람먹습았었겠죠와며면서야더또및각등당체분위치출입현재업법차운반"
)


def _table(spec: str) -> dict[str, float]:
    return {item[0]: float(item[1:]) for item in spec.split()}


def _letter_costs() -> dict[str, dict[str, float]]:
    """-ln P(letter) per language, for the letters each language lists."""
    out: dict[str, dict[str, float]] = {}
    for name, spec in LATIN.items():
        table = _table(spec)
        rare = RARE_ASCII.get(name, "")
        share = (sum(table.values()) + RARE * len(rare)) / 100
        costs = {letter: -math.log(freq / 100) for letter, freq in table.items()}
        ascii_cost = -math.log((1 - share) / (26 - len(rare)))
        costs.update({chr(c): ascii_cost for c in range(ord("a"), ord("z") + 1)})
        costs.update({letter: -math.log(RARE / 100) for letter in rare})
        out[name] = costs
    for name, spec in ALPHABETS.items():
        table = _table(spec)
        total = sum(table.values())
        out[name] = {letter: -math.log(freq / total) for letter, freq in table.items()}
    return out


COSTS = _letter_costs()


def fold(ch: str) -> str:
    """The lowercase form a table lists; Turkish dotted capital I stays itself."""
    if ch == "İ":
        return ch
    low = ch.lower()
    return low if len(low) == 1 else ch


@lru_cache(maxsize=65536)
def letter_cost(ch: str) -> tuple[float, ...]:
    """-ln P(ch) under each of LANGUAGES, for a letter."""
    key = fold(ch)
    out = []
    for name in LANGUAGES:
        if name in CJK_LANGUAGES:
            out.append(cjk_cost(ch, name))
        elif ch.isascii():
            out.append(COSTS[name].get(key, FOREIGN) if name in LATIN else ASCII_IN_NON_LATIN)
        else:
            out.append(COSTS[name].get(key, FOREIGN))
    return tuple(out)


def _in_level_one(ch: str, codec: str, low: int, high: int) -> bool:
    """Whether `ch` is in the first (common) level of a national standard: its lead byte
    in `codec` falls in [low, high]."""
    try:
        data = ch.encode(codec)
    except UnicodeEncodeError:
        return False
    return len(data) == 2 and low <= data[0] <= high


@lru_cache(maxsize=65536)
def script(ch: str) -> str:
    """The script of a letter: LATIN, CYRILLIC, GREEK, HAN, KANA, HANGUL or OTHER."""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "OTHER"
    first = name.split(" ", 1)[0]
    if first in ("LATIN", "CYRILLIC", "GREEK", "HANGUL"):
        return first
    if first == "CJK":
        return "HAN"
    if first in ("HIRAGANA", "KATAKANA") or name.startswith("HALFWIDTH KATAKANA"):
        return "KANA"
    if first == "HALFWIDTH" and "HANGUL" in name:
        return "HANGUL"
    return "OTHER"


def cjk_cost(ch: str, language: str) -> float:
    """-ln P(ch) for a Chinese, Japanese or Korean text, from character tiers."""
    kind = script(ch)
    if ch.isascii():
        return ASCII_IN_NON_LATIN
    if language == "Korean":
        if kind == "HANGUL" and "HALFWIDTH" not in unicodedata.name(ch, ""):
            if ch in COMMON_KOREAN:
                return 4.9
            return 8.3 if _in_level_one(ch, "euc_kr", 0xB0, 0xC8) else 11.5
        return 11.5 if kind == "HAN" else FOREIGN
    if language == "Japanese":
        if kind == "KANA":
            if "HALFWIDTH" in unicodedata.name(ch, ""):
                return 11.0  # half-width katakana: legacy terminals, rare in text
            return 5.0 if "HIRAGANA" in unicodedata.name(ch, "") else 6.5
        if kind == "HAN":
            if ch in COMMON_CHINESE[:500] and _in_level_one(ch, "euc_jp", 0xB0, 0xCF):
                return 6.5
            return 8.8 if _in_level_one(ch, "euc_jp", 0xB0, 0xCF) else 12.0
        return FOREIGN
    if kind != "HAN":
        return FOREIGN
    if language == "Chinese":
        if ch in COMMON_CHINESE[:500]:
            return 6.0
        if ch in COMMON_CHINESE:
            return 7.8
        return 9.6 if _in_level_one(ch, "gb2312", 0xB0, 0xD7) else 13.0
    # traditional: the common characters that Big5 has as they are, then Big5 level 1
    level_one = _in_level_one(ch, "big5", 0xA4, 0xC6)
    if ch in COMMON_CHINESE[:500] and level_one:
        return 6.0
    if ch in COMMON_CHINESE and level_one:
        return 7.8
    return 9.4 if level_one else 13.0
